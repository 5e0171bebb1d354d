//! An opcode's modifiers, read once: each word after the name is a [`Mod`] the decoder knows, a
//! type, or a word of PTX it does not read (kept for its name, which a refusal gives), in the
//! order written. Those that change nothing here are dropped first ([`IGNORED`]).

use crate::ir::{Space, Ty};

/// Modifiers dropped before decoding, as changing nothing here: cache operators, memory orders
/// and scopes (every access is seen at once, in program order), `.uni`, and hints to caches
/// there are not. (`.cluster` and `.uni` name forms of `barrier` and `vote`, which look for
/// them in the opcode itself.)
const IGNORED: [&str; 35] = [
    "ca",
    "cg",
    "cs",
    "lu",
    "cv",
    "wb",
    "wt",
    "nc",
    "volatile",
    "relaxed",
    "acquire",
    "release",
    "acq_rel",
    "sc",
    "cta",
    "gpu",
    "sys",
    "cluster",
    "uni",
    "aligned",
    "weak",
    // Eviction priorities, prefetch sizes and cache policies: hints to caches there are not.
    "L1::evict_normal",
    "L1::evict_unchanged",
    "L1::evict_first",
    "L1::evict_last",
    "L1::no_allocate",
    "L2::evict_normal",
    "L2::evict_first",
    "L2::evict_last",
    "L2::evict_unchanged",
    "L2::64B",
    "L2::128B",
    "L2::256B",
    "L2::cache_hint",
    "level::prefetch_size",
];

/// [`Mod`], each variant with the word PTX writes for it.
macro_rules! modifiers {
    ($($(#[$doc:meta])* $($variant:ident = $text:literal),+;)+) => {
        /// A modifier the decoder reads.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(super) enum Mod {
            $($(#[$doc])* $($variant,)+)+
        }

        impl Mod {
            /// The modifier `word` names, if the decoder reads it.
            fn named(word: &str) -> Option<Mod> {
                Some(match word {
                    $($($text => Mod::$variant,)+)+
                    _ => return None,
                })
            }

            /// The word PTX writes for it.
            pub(super) fn text(self) -> &'static str {
                match self {
                    $($(Mod::$variant => $text,)+)+
                }
            }
        }
    };
}

modifiers! {
    /// State spaces.
    Global = "global", Shared = "shared", SharedCta = "shared::cta", SharedCluster = "shared::cluster",
    Local = "local", Param = "param", Const = "const";
    /// Vectors.
    V2 = "v2", V4 = "v4", V8 = "v8";
    /// Roundings: of floats, of floats to integers, tf32's.
    Rn = "rn", Rz = "rz", Rm = "rm", Rp = "rp", Rni = "rni", Rzi = "rzi", Rmi = "rmi", Rpi = "rpi", Rna = "rna";
    /// What floats' arithmetic may add.
    Ftz = "ftz", Sat = "sat", Satfinite = "satfinite", Relu = "relu", Approx = "approx", Full = "full",
    NaN = "NaN", Noftz = "noftz";
    /// Integer forms: the carry chain, halves of products, pairs of 16 bits, shifts and fields.
    Cc = "cc", Lo = "lo", Hi = "hi", Wide = "wide", U16x2 = "u16x2", S16x2 = "s16x2", Shiftamt = "shiftamt",
    Clamp = "clamp", Wrap = "wrap", L = "l", R = "r";
    /// `prmt`'s modes.
    F4e = "f4e", B4e = "b4e", Rc8 = "rc8", Ecl = "ecl", Ecr = "ecr", Rc16 = "rc16";
    /// `testp`'s classes.
    Finite = "finite", Infinite = "infinite", Number = "number", NotANumber = "notanumber", Normal = "normal",
    Subnormal = "subnormal";
    /// Comparisons (`.lo` and `.hi` are above).
    Eq = "eq", Ne = "ne", Lt = "lt", Le = "le", Gt = "gt", Ge = "ge", Ls = "ls", Hs = "hs", Equ = "equ",
    Neu = "neu", Ltu = "ltu", Leu = "leu", Gtu = "gtu", Geu = "geu", Num = "num", Nan = "nan";
    /// Operations of predicates, atomics and reductions.
    And = "and", Or = "or", Xor = "xor", Add = "add", Min = "min", Max = "max", Inc = "inc", Dec = "dec",
    Exch = "exch", Cas = "cas", Popc = "popc";
    /// Conversions and branches.
    To = "to", Tf32 = "tf32", Idx = "idx";
    /// Barriers and warps.
    Sync = "sync", Warp = "warp", Arrive = "arrive", Wait = "wait", Red = "red", Up = "up", Down = "down",
    Bfly = "bfly", All = "all", Any = "any", Ballot = "ballot";
    /// Tensor cores: what a `wmma` does, its fragments and layouts, `ldmatrix`'s counts, shapes.
    Load = "load", Store = "store", Mma = "mma", A = "a", B = "b", C = "c", D = "d", Row = "row", Col = "col",
    Trans = "trans", X1 = "x1", X2 = "x2", X4 = "x4", M8n8 = "m8n8", M16n16k16 = "m16n16k16",
    M32n8k16 = "m32n8k16", M8n32k16 = "m8n32k16", M16n8k16 = "m16n8k16", M16n8k8 = "m16n8k8",
    M16n8k4 = "m16n8k4", M16n8k32 = "m16n8k32";
    /// Asynchronous copies and `mbarrier`s.
    Async = "async", Bulk = "bulk", BulkGroup = "bulk_group", CommitGroup = "commit_group",
    WaitGroup = "wait_group", WaitAll = "wait_all", Read = "read", Prefetch = "prefetch", L2 = "L2",
    Mbarrier = "mbarrier", CompleteTxBytes = "mbarrier::complete_tx::bytes", Noinc = "noinc", Init = "init",
    ArriveDrop = "arrive_drop", ExpectTx = "expect_tx", CompleteTx = "complete_tx", TestWait = "test_wait",
    TryWait = "try_wait", Parity = "parity", Inval = "inval";
}

/// One modifier as read.
#[derive(Clone, Debug, PartialEq)]
enum Word {
    Mod(Mod),
    Ty(Ty),
    /// A modifier of PTX that no instruction here reads.
    Other(String),
}

/// The modifiers of an opcode, in order, less the ignored ones.
pub(super) struct Mods {
    words: Vec<Word>,
}

impl Mods {
    /// Reads `words`, the opcode's modifiers (each a word of PTX).
    pub(super) fn new<'a>(words: impl Iterator<Item = &'a str>) -> Mods {
        let word = |w: &str| match (Ty::named(w), Mod::named(w)) {
            (Some(ty), _) => Word::Ty(ty),
            (None, Some(m)) => Word::Mod(m),
            (None, None) => Word::Other(w.to_string()),
        };
        Mods { words: words.filter(|w| !IGNORED.contains(w)).map(word).collect() }
    }

    pub(super) fn has(&self, m: Mod) -> bool {
        self.words.contains(&Word::Mod(m))
    }

    /// The modifier at `i`, if the decoder reads it.
    pub(super) fn at(&self, i: usize) -> Option<Mod> {
        match self.words.get(i) {
            Some(Word::Mod(m)) => Some(*m),
            _ => None,
        }
    }

    /// The modifiers from `i` on, if the decoder reads each.
    pub(super) fn tail(&self, i: usize) -> Option<Vec<Mod>> {
        self.words.get(i..)?.iter().map(|w| if let Word::Mod(m) = w { Some(*m) } else { None }).collect()
    }

    /// The value of the first of `table`'s modifiers that is present.
    pub(super) fn pick<T: Copy>(&self, table: &[(Mod, T)]) -> Option<T> {
        table.iter().find(|&&(m, _)| self.has(m)).map(|&(_, v)| v)
    }

    /// What `f` makes of the first modifier, in the order written, that it makes something of.
    pub(super) fn first<T>(&self, f: impl Fn(Mod) -> Option<T>) -> Option<T> {
        self.words.iter().find_map(|w| if let Word::Mod(m) = w { f(*m) } else { None })
    }

    /// The modifiers naming types, in order (`tf32`, which is also a rounding's, among them
    /// where `tf32` says so).
    pub(super) fn types(&self, tf32: bool) -> Vec<Ty> {
        let ty = |w: &Word| match w {
            Word::Ty(ty) => Some(*ty),
            Word::Mod(Mod::Tf32) if tf32 => Some(Ty::TF32),
            _ => None,
        };
        self.words.iter().filter_map(ty).collect()
    }

    /// The last modifier naming a type.
    pub(super) fn ty(&self) -> Option<Ty> {
        self.types(false).last().copied()
    }

    /// The two last type modifiers, `(destination, source)` as `cvt` writes them.
    pub(super) fn two_types(&self) -> Option<(Ty, Ty)> {
        match self.types(false)[..] {
            [.., a, b] => Some((a, b)),
            _ => None,
        }
    }

    /// The first modifier of the form of a shape (`m16n16k16`): which it is, if the decoder reads
    /// it, and as written.
    pub(super) fn shape(&self) -> Option<(Option<Mod>, &str)> {
        let shape = |w: &str| w.starts_with('m') && w.contains('n') && w.contains('k');
        self.words.iter().find_map(|w| match w {
            Word::Mod(m) if shape(m.text()) => Some((Some(*m), m.text())),
            Word::Other(w) if shape(w) => Some((None, w.as_str())),
            _ => None,
        })
    }

    pub(super) fn space(&self) -> Space {
        let space = |m| match m {
            Mod::Global => Some(Space::Global),
            // A `.shared::cluster` address of the block's own memory is its `::cta` one;
            // another block's is marked with its rank (`mapa`).
            Mod::Shared | Mod::SharedCta | Mod::SharedCluster => Some(Space::Shared),
            Mod::Local => Some(Space::Local),
            Mod::Param => Some(Space::Param),
            Mod::Const => Some(Space::Const),
            _ => None,
        };
        self.first(space).unwrap_or(Space::Generic)
    }

    pub(super) fn vector(&self) -> usize {
        self.pick(&[(Mod::V2, 2), (Mod::V4, 4), (Mod::V8, 8)]).unwrap_or(1)
    }

    /// Every modifier is one of `known` (or ignorable, or a type): else the first that is not,
    /// as a refusal names it.
    pub(super) fn only(&self, known: &[Mod]) -> Result<(), String> {
        self.only_where(|m| known.contains(&m))
    }

    /// [`Mods::only`] for the modifiers `known` accepts: a family whose modifiers are those a
    /// reading function takes says so once.
    pub(super) fn only_where(&self, known: impl Fn(Mod) -> bool) -> Result<(), String> {
        let unknown = self.words.iter().find_map(|w| match w {
            Word::Mod(m) if !known(*m) => Some(m.text()),
            Word::Other(w) => Some(w.as_str()),
            _ => None,
        });
        match unknown {
            Some(w) => Err(format!("the modifier .{w}")),
            None => Ok(()),
        }
    }
}
