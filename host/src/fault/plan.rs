//! What fails: [`Rule`]s gathered in a [`FaultPlan`], built in code or read from text
//! (`PEERPOOL_SIM_FAULTS` under `peerpool sim`).
//!
//! The text form is rules separated by `;`:
//! `call[@n|~p]=CODE[!sticky|!transient][!before|!after]`, for example
//! `cuMemPoolSetAccess@2=CUDA_ERROR_OUT_OF_MEMORY; cuLaunchKernel=ILLEGAL_ADDRESS!after`.
//! `call` is a driver call's documented name (`cuMemAlloc`, not `cuMemAlloc_v2`), one of
//! [`DOCUMENTED_CALLS`](crate::driver::DOCUMENTED_CALLS), or a prefix of some ending in `*` (a
//! rule that could never fire is refused); `@n` fails the nth matching call (1-based), `~p` each matching call with a
//! chance of `p` percent (drawn from [`FaultPlan::seed`]), and without either every matching
//! call fails; `CODE` is a `CudaCode` name, with or without `CUDA_ERROR_`; a rule is sticky when
//! its code is sticky on hardware unless `!sticky` or `!transient` says otherwise. A rule fails
//! the call before the driver sees it unless `!after` says to make the call and then replace its
//! result (the driver's work is done: what it made is the caller's to find and release).

use crate::driver::codes;
use crate::driver::codes::CudaCode;
use crate::driver::{DOCUMENTED_CALLS, documented_name, is_documented, nearest_documented};
use crate::text::echo;
use std::fmt;
use std::str::FromStr;

/// Which calls of a name a rule fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// The `n`th matching call (1-based), counted since the plan was armed or reset.
    Nth(u64),
    /// Every matching call.
    Every,
    /// Each matching call with this chance in a million, drawn from the plan's seed: the same
    /// seed and the same calls fail the same calls.
    Chance(u32),
}

/// One injected failure: which calls, with which code, sticky or not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// A call name (`"cuMemPoolSetAccess"`), or a prefix ending in `*` (`"cuMemcpy*"`).
    pub call: String,
    /// Which matching calls fail.
    pub when: When,
    /// The `CudaCode` returned.
    pub code: CudaCode,
    /// Whether every later call fails too, like a real sticky error.
    pub sticky: bool,
    /// Whether the call is made first and its result replaced (else it is never made).
    pub after: bool,
}

impl Rule {
    /// Fails the `n`th (1-based) call matching `call`; sticky when the code is sticky on hardware.
    pub fn nth(call: &str, n: u64, code: CudaCode) -> Rule {
        Rule { call: call.into(), when: When::Nth(n), code, sticky: code.is_sticky(), after: false }
    }

    /// Fails every call matching `call`; sticky when the code is sticky on hardware.
    pub fn every(call: &str, code: CudaCode) -> Rule {
        Rule { call: call.into(), when: When::Every, code, sticky: code.is_sticky(), after: false }
    }

    /// Overrides the stickiness.
    pub fn sticky(mut self, sticky: bool) -> Rule {
        self.sticky = sticky;
        self
    }

    /// Makes the call first and replaces its result (`true`), or fails it unmade (`false`).
    pub fn after(mut self, after: bool) -> Rule {
        self.after = after;
        self
    }

    pub(super) fn matches(&self, call: &str) -> bool {
        match self.call.strip_suffix('*') {
            Some(prefix) => call.starts_with(prefix),
            None => self.call == call,
        }
    }
}

/// The rules an injector applies, in order (the first that fires wins).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// The rules.
    pub rules: Vec<Rule>,
    /// Seeds the draws of [`When::Chance`] rules.
    pub seed: u64,
}

/// Codes a random plan draws from: what real calls return when resources, arguments or the
/// device give out.
const RANDOM_CODES: [CudaCode; 6] = [
    CudaCode::CUDA_ERROR_INVALID_VALUE,
    CudaCode::CUDA_ERROR_OUT_OF_MEMORY,
    CudaCode::CUDA_ERROR_INVALID_CONTEXT,
    CudaCode::CUDA_ERROR_NOT_SUPPORTED,
    CudaCode::CUDA_ERROR_UNKNOWN,
    CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS,
];

impl FaultPlan {
    /// No rules.
    pub fn new() -> FaultPlan {
        FaultPlan::default()
    }

    /// This plan and `rule`.
    pub fn with(mut self, rule: Rule) -> FaultPlan {
        self.rules.push(rule);
        self
    }

    /// Up to `faults` distinct call sites drawn from `calls` (a recorded call list, see
    /// [`FaultInjector::calls`](super::FaultInjector::calls)), each failed once with a code drawn from a fixed list;
    /// sticky codes make sticky rules. The same seed and list give the same plan.
    pub fn random(seed: u64, calls: &[&str], faults: usize) -> FaultPlan {
        let mut rng = SplitMix64(seed);
        let mut plan = FaultPlan::new();
        for _ in 0..faults.min(calls.len()) {
            let at = (rng.next() % calls.len() as u64) as usize;
            let name = calls[at];
            let nth = calls[..=at].iter().filter(|&&c| c == name).count() as u64;
            let code = RANDOM_CODES[(rng.next() % RANDOM_CODES.len() as u64) as usize];
            if !plan.rules.iter().any(|r| r.call == name && r.when == When::Nth(nth)) {
                plan.rules.push(Rule::nth(name, nth, code));
            }
        }
        plan
    }
}

/// splitmix64 (Steele, Lea, Flood 2014): a tiny, good-enough seeded generator, no dependency.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SplitMix64(pub(super) u64);

impl SplitMix64 {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Why a fault plan's text was refused: the rule, counted from 1, and what is wrong with it
/// (the rule shown escaped and cut: `crate::text::echo`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("fault rule {index} (\"{}\"): {why}", echo(rule))]
pub struct PlanError {
    /// Which rule, from 1.
    pub index: usize,
    /// Its text.
    pub rule: String,
    /// What is wrong.
    pub why: String,
}

impl FromStr for Rule {
    type Err = String;

    fn from_str(text: &str) -> Result<Rule, String> {
        let (target, outcome) = text.split_once('=').ok_or("expected call[@n]=CODE")?;
        let target = target.trim();
        let (call, when) = if let Some((call, n)) = target.split_once('@') {
            let n: u64 = n.trim().parse().map_err(|_| format!("\"{}\" is not a call count", echo(n)))?;
            if n == 0 {
                return Err("calls are counted from 1".into());
            }
            (call.trim(), When::Nth(n))
        } else if let Some((call, p)) = target.split_once('~') {
            let percent: f64 = p.trim().parse().map_err(|_| format!("\"{}\" is not a percentage", echo(p)))?;
            if !(0.0..=100.0).contains(&percent) {
                return Err(format!("{percent} is not a percentage from 0 to 100"));
            }
            (call.trim(), When::Chance((percent * 10_000.0).round() as u32))
        } else {
            (target, When::Every)
        };
        let name_ok = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let stem = call.strip_suffix('*').unwrap_or(call);
        if !stem.starts_with("cu") || !stem.chars().all(name_ok) {
            return Err(format!("\"{}\" is not a driver call name (cuMemAlloc) or prefix (cuMemcpy*)", echo(call)));
        }
        known_call(call)?;
        let mut parts = outcome.split('!').map(str::trim);
        let code = parts.next().unwrap_or_default();
        let code = codes::from_name(code).ok_or_else(|| format!("\"{}\" is not a CUresult name", echo(code)))?;
        if code == CudaCode::CUDA_SUCCESS {
            return Err("a rule must fail the call, not succeed it".into());
        }
        let (mut sticky, mut after) = (None, None);
        for flag in parts {
            let (slot, value) = match flag {
                "sticky" => (&mut sticky, true),
                "transient" => (&mut sticky, false),
                "after" => (&mut after, true),
                "before" => (&mut after, false),
                other => return Err(format!("\"{}\" is none of sticky, transient, before, after", echo(other))),
            };
            if slot.replace(value).is_some() {
                return Err(format!("\"{}\" repeats or contradicts an earlier flag", echo(flag)));
            }
        }
        let sticky = sticky.unwrap_or_else(|| code.is_sticky());
        Ok(Rule { call: call.to_string(), when, code, sticky, after: after.unwrap_or(false) })
    }
}

/// Refuses a rule's call that no driver call can match (the rule would never fire): a name
/// that is no documented call, a versioned symbol (calls go by their documented names), or a
/// prefix of none.
fn known_call(call: &str) -> Result<(), String> {
    if let Some(prefix) = call.strip_suffix('*') {
        return match DOCUMENTED_CALLS.iter().any(|c| c.starts_with(prefix)) {
            true => Ok(()),
            false => Err(format!("\"{}\" matches no CUDA driver call", echo(call))),
        };
    }
    if is_documented(call) {
        return Ok(());
    }
    let base = documented_name(call);
    if base != call && is_documented(base) {
        return Err(format!(
            "\"{}\" is the versioned symbol of {base}: rules name calls as CUDA documents them ({base})",
            echo(call)
        ));
    }
    match nearest_documented(call) {
        Some(meant) => Err(format!("\"{}\" is not a CUDA driver call; did you mean {meant}?", echo(call))),
        None => Err(format!("\"{}\" is not a CUDA driver call", echo(call))),
    }
}

impl FromStr for FaultPlan {
    type Err = PlanError;

    /// Reads the text form described in the module docs; empty text is an empty plan.
    fn from_str(text: &str) -> Result<FaultPlan, PlanError> {
        let mut plan = FaultPlan::new();
        for (i, rule) in text.split(';').map(str::trim).filter(|r| !r.is_empty()).enumerate() {
            let parsed = rule.parse().map_err(|why| PlanError { index: i + 1, rule: rule.to_string(), why })?;
            plan.rules.push(parsed);
        }
        Ok(plan)
    }
}

impl fmt::Display for Rule {
    /// The text form, which [`Rule::from_str`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.call)?;
        match self.when {
            When::Nth(n) => write!(f, "@{n}")?,
            When::Chance(per_million) => write!(f, "~{}", per_million as f64 / 10_000.0)?,
            When::Every => {}
        }
        let flag = if self.sticky { "sticky" } else { "transient" };
        write!(f, "={:?}!{flag}", self.code)?;
        if self.after {
            f.write_str("!after")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_form_reads_back_what_it_writes() {
        let plan: FaultPlan = "cuMemPoolSetAccess@2=OUT_OF_MEMORY; cuLaunchKernel=CUDA_ERROR_ILLEGAL_ADDRESS; \
                               cuMemcpy*@1=INVALID_VALUE!sticky; cuMemAllocAsync~2.5=OUT_OF_MEMORY; \
                               cuMemPoolCreate@1=OUT_OF_MEMORY!after; cuMemFree=UNKNOWN!before!transient"
            .parse()
            .unwrap();
        assert_eq!(plan.rules[0], Rule::nth("cuMemPoolSetAccess", 2, CudaCode::CUDA_ERROR_OUT_OF_MEMORY));
        assert_eq!(plan.rules[1], Rule::every("cuLaunchKernel", CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert!(plan.rules[1].sticky, "sticky on hardware");
        assert_eq!(plan.rules[2], Rule::nth("cuMemcpy*", 1, CudaCode::CUDA_ERROR_INVALID_VALUE).sticky(true));
        assert_eq!(plan.rules[3].when, When::Chance(25_000));
        assert_eq!(plan.rules[4], Rule::nth("cuMemPoolCreate", 1, CudaCode::CUDA_ERROR_OUT_OF_MEMORY).after(true));
        assert_eq!(plan.rules[5], Rule::every("cuMemFree", CudaCode::CUDA_ERROR_UNKNOWN).sticky(false));
        assert!(plan.rules[..4].iter().all(|r| !r.after), "before unless said");
        for rule in &plan.rules {
            assert_eq!(&rule.to_string().parse::<Rule>().unwrap(), rule);
        }
        assert_eq!("".parse::<FaultPlan>().unwrap(), FaultPlan::new());
    }

    /// A rule on a call that does not exist, or on a versioned symbol (rules go by the names
    /// CUDA documents), would never fire: refused, with the name meant where one is close.
    #[test]
    fn a_rule_on_a_call_that_does_not_exist_is_refused_with_the_name_meant() {
        for (text, says) in [
            ("cuMemPoolSetAcess=OUT_OF_MEMORY", "did you mean cuMemPoolSetAccess"),
            ("cuMemAlloc_v2@1=OUT_OF_MEMORY", "is the versioned symbol of cuMemAlloc"),
            ("cuCtxCreate_v4=UNKNOWN", "is the versioned symbol of cuCtxCreate"),
            ("cuLaunchKernal~5=ILLEGAL_ADDRESS", "did you mean cuLaunchKernel"),
            ("cuFrobnicate=UNKNOWN", "is not a CUDA driver call"),
            ("cuMemcpyy*=UNKNOWN", "matches no CUDA driver call"),
        ] {
            let error = text.parse::<FaultPlan>().expect_err(text).to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
        let known: FaultPlan =
            "cuMemPoolSetAccess=OUT_OF_MEMORY; cuMemcpy*=UNKNOWN; cuInit=UNKNOWN; cuGraphLaunch=UNKNOWN"
                .parse()
                .expect("documented names and a prefix of some");
        assert_eq!(known.rules.len(), 4);
    }

    /// A rule's text reaches the terminal escaped and cut, however hostile.
    #[test]
    fn a_refused_rule_is_echoed_escaped_and_cut() {
        let huge = format!("cuMemAlloc@{}=OUT_OF_MEMORY", "9".repeat(1 << 20));
        for text in [
            "cuMemAlloc@\u{1b}[2J=OUT_OF_MEMORY".to_string(),
            "cuMemAlloc=\u{1b}]0;pwned\u{7}".to_string(),
            "cuMemAlloc=OUT_OF_MEMORY!\u{9b}2J".to_string(),
            "cuMem\u{1b}Alloc=OUT_OF_MEMORY".to_string(),
            huge,
        ] {
            let error = text.parse::<FaultPlan>().unwrap_err().to_string();
            assert!(!error.chars().any(char::is_control), "{error:?}");
            assert!(error.len() < 1024, "{} bytes", error.len());
        }
    }

    #[test]
    fn malformed_rules_are_refused_with_their_place_and_reason() {
        for (text, index, why) in [
            ("cuMemAlloc", 1, "expected"),
            ("cuMemAlloc=OOPS", 1, "not a CUresult"),
            ("cuMemAlloc@0=OUT_OF_MEMORY", 1, "from 1"),
            ("cuMemAlloc@x=OUT_OF_MEMORY", 1, "call count"),
            ("cuMemAlloc~150=OUT_OF_MEMORY", 1, "percentage"),
            ("ok=OUT_OF_MEMORY", 1, "not a driver call"),
            ("cuMemAlloc=CUDA_SUCCESS", 1, "fail the call"),
            ("cuMemAlloc=OUT_OF_MEMORY; cuInit=INVALID_VALUE!forever", 2, "none of"),
            ("cuMemAlloc=OUT_OF_MEMORY!after!before", 1, "contradicts"),
            ("cuMemAlloc=OUT_OF_MEMORY!sticky!sticky", 1, "repeats"),
        ] {
            let error = text.parse::<FaultPlan>().unwrap_err();
            assert_eq!(error.index, index, "{text}");
            assert!(error.why.contains(why), "{text}: {error}");
        }
    }
}
