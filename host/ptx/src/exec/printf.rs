//! Device `printf` (`vprintf(format, args)`): the format string and the arguments, read through
//! the thread's accesses, formatted as C's printf does. The arguments lie in a buffer, each at
//! a multiple of its size: integers 4 bytes, or 8 with `l`/`ll`/`z`/`j`/`t`; floating
//! conversions a double; `%s` and `%p` a pointer. Like CUDA's, it returns how many arguments
//! it took, `-1` for a null format.

/// The most bytes of one string read (a format, or a `%s` argument). Bytes are read through a
/// function that fails as the access would.
const MAX_STRING: usize = 1 << 16;

fn string<E>(mem: &mut impl FnMut(u64) -> Result<u8, E>, addr: u64) -> Result<Vec<u8>, E> {
    let mut out = Vec::new();
    while out.len() < MAX_STRING {
        match mem(addr.wrapping_add(out.len() as u64))? {
            0 => break,
            b => out.push(b),
        }
    }
    Ok(out)
}

/// A failed device `assert`'s line, as the driver prints it: where, which thread, what.
pub(super) fn assertion<E>(
    mem: &mut impl FnMut(u64) -> Result<u8, E>,
    [message, file, function]: [u64; 3],
    line: u32,
    who: super::Thread,
) -> Result<String, E> {
    let mut text = |addr| string(mem, addr).map(|t| String::from_utf8_lossy(&t).into_owned());
    let (message, file, function) = (text(message)?, text(file)?, text(function)?);
    let ([bx, by, bz], [tx, ty, tz]) = (who.block, who.thread);
    Ok(format!(
        "{file}:{line}: {function}: block: [{bx},{by},{bz}], thread: [{tx},{ty},{tz}] Assertion `{message}` failed.\n"
    ))
}

/// One conversion's flags, width and precision.
#[derive(Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
}

/// The text and the number of arguments taken.
pub(super) fn format<E>(mem: &mut impl FnMut(u64) -> Result<u8, E>, fmt: u64, args: u64) -> Result<(String, i32), E> {
    if fmt == 0 {
        return Ok((String::new(), -1));
    }
    let f = string(mem, fmt)?;
    let mut out = Vec::new();
    let (mut i, mut at, mut taken) = (0, 0u64, 0);
    // The next argument of `size` bytes, at a multiple of its size.
    let mut next = |mem: &mut dyn FnMut(u64) -> Result<u8, E>, size: u64| -> Result<u64, E> {
        at = at.next_multiple_of(size);
        let mut v = 0u64;
        for k in 0..size {
            v |= (mem(args.wrapping_add(at + k))? as u64) << (8 * k);
        }
        at += size;
        taken += 1;
        Ok(v)
    };
    while i < f.len() {
        if f[i] != b'%' {
            out.push(f[i]);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        let mut s = Spec::default();
        while let Some(&c) = f.get(i) {
            match c {
                b'-' => s.left = true,
                b'+' => s.plus = true,
                b' ' => s.space = true,
                b'#' => s.alt = true,
                b'0' => s.zero = true,
                _ => break,
            }
            i += 1;
        }
        let digits = |i: &mut usize| {
            let mut n = 0usize;
            while let Some(d) = f.get(*i).filter(|c| c.is_ascii_digit()) {
                n = n.saturating_mul(10).saturating_add((d - b'0') as usize);
                *i += 1;
            }
            n
        };
        s.width = digits(&mut i);
        if f.get(i) == Some(&b'.') {
            i += 1;
            s.precision = Some(digits(&mut i));
        }
        let mut long = false;
        while let Some(&c) = f.get(i).filter(|c| b"hlLqjzt".contains(c)) {
            long |= matches!(c, b'l' | b'L' | b'q' | b'j' | b'z' | b't');
            i += 1;
        }
        let Some(&conv) = f.get(i) else {
            out.extend_from_slice(&f[start..]);
            break;
        };
        i += 1;
        let int_size = if long { 8 } else { 4 };
        let text = match conv {
            b'%' => "%".to_string(),
            b'd' | b'i' => {
                let v = next(mem, int_size)?;
                let v = if long { v as i64 } else { v as u32 as i32 as i64 };
                integer(&s, sign(&s, v < 0), v.unsigned_abs().to_string(), "")
            }
            b'u' | b'o' | b'x' | b'X' => {
                let v = next(mem, int_size)?;
                let v = if long { v } else { v as u32 as u64 };
                let (digits, prefix) = match conv {
                    b'u' => (v.to_string(), ""),
                    b'o' => (format!("{v:o}"), if s.alt { "0" } else { "" }),
                    b'x' => (format!("{v:x}"), if s.alt && v != 0 { "0x" } else { "" }),
                    _ => (format!("{v:X}"), if s.alt && v != 0 { "0X" } else { "" }),
                };
                integer(&s, "", digits, prefix)
            }
            b'c' => pad(&s, (next(mem, int_size)? as u8 as char).to_string(), false),
            b's' => {
                let p = next(mem, 8)?;
                let mut text = if p == 0 { b"(null)".to_vec() } else { string(mem, p)? };
                if let Some(n) = s.precision {
                    text.truncate(n);
                }
                pad(&s, String::from_utf8_lossy(&text).into_owned(), false)
            }
            b'p' => {
                let p = next(mem, 8)?;
                pad(&s, if p == 0 { "(nil)".to_string() } else { format!("{p:#x}") }, false)
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' => float(&s, conv, f64::from_bits(next(mem, 8)?)),
            // What C's printf does not know (or `%n`, `%a`): written as it stands.
            _ => String::from_utf8_lossy(&f[start..i]).into_owned(),
        };
        out.extend_from_slice(text.as_bytes());
    }
    Ok((String::from_utf8_lossy(&out).into_owned(), taken))
}

/// What stands before a signed number: `-`, or by the flags `+`, a space, or nothing.
fn sign(s: &Spec, negative: bool) -> &'static str {
    match () {
        _ if negative => "-",
        _ if s.plus => "+",
        _ if s.space => " ",
        _ => "",
    }
}

/// `text` padded to the width: spaces on the left, or on the right when `-`; zeros after the
/// sign when `zeros`.
fn pad(s: &Spec, text: String, zeros: bool) -> String {
    let len = text.chars().count();
    if len >= s.width {
        return text;
    }
    let fill = s.width - len;
    match () {
        _ if s.left => format!("{text}{}", " ".repeat(fill)),
        _ if zeros => {
            // After the sign and a 0x prefix.
            let cut = text
                .find(|c: char| c.is_ascii_alphanumeric())
                .map(|at| if text[at..].starts_with("0x") || text[at..].starts_with("0X") { at + 2 } else { at })
                .unwrap_or(0);
            format!("{}{}{}", &text[..cut], "0".repeat(fill), &text[cut..])
        }
        _ => format!("{}{text}", " ".repeat(fill)),
    }
}

/// An integer's digits with C's precision (the fewest digits; `.0` of zero prints none).
fn integer(s: &Spec, sign: &str, digits: String, prefix: &str) -> String {
    let digits = match s.precision {
        Some(0) if digits == "0" => String::new(),
        Some(p) if digits.len() < p => format!("{}{digits}", "0".repeat(p - digits.len())),
        _ => digits,
    };
    // `%#o` makes the first digit a zero, if it is not one already.
    let prefix = if prefix == "0" && digits.starts_with('0') { "" } else { prefix };
    pad(s, format!("{sign}{prefix}{digits}"), s.zero && s.precision.is_none())
}

/// `%f`, `%e`, `%g` (and capitals) as C formats them: exactly rounded digits, a signed
/// exponent of two digits or more, `%g`'s trailing zeros dropped but with `#`.
fn float(s: &Spec, conv: u8, v: f64) -> String {
    let upper = conv.is_ascii_uppercase();
    let sign = sign(s, v.is_sign_negative());
    let x = v.abs();
    if !x.is_finite() {
        let word = if x.is_nan() { "nan" } else { "inf" };
        let word = if upper { word.to_uppercase() } else { word.to_string() };
        return pad(s, format!("{sign}{word}"), false);
    }
    let p = s.precision.unwrap_or(6);
    let body = match conv.to_ascii_lowercase() {
        b'f' => fixed(x, p, s.alt),
        b'e' => exponent(x, p, s.alt),
        _ => {
            let p = p.max(1);
            // The exponent %e would print decides, as C says.
            let e = exponent(x, p - 1, false);
            let exp: i32 = e[e.find('e').map_or(0, |at| at + 1)..].parse().unwrap_or(0);
            let body = if exp < -4 || exp >= p as i32 {
                exponent(x, p - 1, s.alt)
            } else {
                fixed(x, (p as i32 - 1 - exp) as usize, s.alt)
            };
            if s.alt { body } else { trim(&body) }
        }
    };
    let body = if upper { body.to_uppercase() } else { body };
    pad(s, format!("{sign}{body}"), s.zero)
}

fn fixed(x: f64, p: usize, alt: bool) -> String {
    let t = format!("{x:.p$}");
    if alt && p == 0 { t + "." } else { t }
}

fn exponent(x: f64, p: usize, alt: bool) -> String {
    let t = format!("{x:.p$e}");
    let (mantissa, exp) = t.split_once('e').unwrap_or((&t, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let dot = if alt && p == 0 { "." } else { "" };
    format!("{mantissa}{dot}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs())
}

/// `%g`'s trailing zeros (and a bare point) dropped from the mantissa.
fn trim(body: &str) -> String {
    let (mantissa, rest) = match body.find('e') {
        Some(at) => body.split_at(at),
        None => (body, ""),
    };
    let mantissa = if mantissa.contains('.') { mantissa.trim_end_matches('0').trim_end_matches('.') } else { mantissa };
    format!("{mantissa}{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A format and its arguments laid out as nvcc lays them: each at a multiple of its size.
    fn printf(fmt: &str, args: &[(u64, u64)]) -> (String, i32) {
        let mut mem = vec![0u8; 4096];
        mem[16..16 + fmt.len()].copy_from_slice(fmt.as_bytes());
        let strings = 2048;
        mem[strings..strings + 8].copy_from_slice(b"string\0\0");
        let mut at = 1024usize;
        for &(size, v) in args {
            at = at.next_multiple_of(size as usize);
            mem[at..at + size as usize].copy_from_slice(&v.to_le_bytes()[..size as usize]);
            at += size as usize;
        }
        let mut read = |a: u64| mem.get(a as usize).copied().ok_or(());
        format(&mut read, 16, 1024).unwrap()
    }

    fn d(v: f64) -> (u64, u64) {
        (8, v.to_bits())
    }

    #[test]
    fn integers_as_c_prints_them() {
        let args = [(4, -42i32 as u32 as u64), (4, 7), (4, 255), (4, 255), (8, u64::MAX), (8, -5i64 as u64), (4, 0)];
        let (text, n) = printf("%d|%5u|%-4x|%#X|%lu|%+ld|%.0d|%%", &args[..]);
        assert_eq!(text, "-42|    7|ff  |0XFF|18446744073709551615|-5||%");
        assert_eq!(n, 7, "%% takes none");
        let (text, _) = printf("%05d|%.3d|%#o|%c", &[(4, -7i32 as u32 as u64), (4, 5), (4, 8), (4, 'z' as u64)]);
        assert_eq!(text, "-0007|005|010|z");
    }

    /// The host's C library formatting one conversion of one value.
    fn c_printf(fmt: &str, v: (u64, u64), float: bool) -> String {
        let mut buf = vec![0u8; 512];
        let f = std::ffi::CString::new(fmt).unwrap();
        // SAFETY: `buf` has room for what snprintf writes (it stops at the length given), and
        // the one argument has the type the conversion reads.
        let n = unsafe {
            match (float, v.0) {
                (true, _) => libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), f.as_ptr(), f64::from_bits(v.1)),
                (false, 8) => libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), f.as_ptr(), v.1),
                (false, _) => libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), f.as_ptr(), v.1 as u32),
            }
        };
        String::from_utf8_lossy(&buf[..n as usize]).into_owned()
    }

    #[test]
    fn every_conversion_prints_what_the_hosts_c_library_prints() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let r = next();
            let flags: String = ["-", "+", " ", "#", "0"].iter().filter(|_| next() % 4 == 0).copied().collect();
            let width = if r % 3 == 0 { String::new() } else { (r % 14).to_string() };
            let precision = if r % 5 < 2 { String::new() } else { format!(".{}", (r >> 8) % 12) };
            let conv = b"diuoxXfFeEgG"[(r >> 16) as usize % 12] as char;
            let float = "fFeEgG".contains(conv);
            let long = !float && r & (1 << 30) != 0;
            let fmt = format!("%{flags}{width}{precision}{}{conv}", if long { "l" } else { "" });
            let bits = next();
            let v = match (float, long) {
                (true, _) => {
                    let scale = 10f64.powi((bits % 40) as i32 - 20);
                    let x = match bits % 16 {
                        0 => 0.0,
                        1 => f64::INFINITY,
                        2 => f64::NAN,
                        3 => 0.5,
                        4 => 2.5,
                        _ => (bits >> 11) as f64 / (1u64 << 53) as f64 * scale,
                    };
                    (8, (if bits & 1 << 10 != 0 { -x } else { x }).to_bits())
                }
                (false, true) => (8, bits >> (bits % 64)),
                (false, false) => (4, (bits >> (bits % 32)) as u32 as u64),
            };
            let want = c_printf(&fmt, v, float);
            assert_eq!(printf(&fmt, &[v]).0, want, "{fmt} of {v:x?}");
        }
    }

    #[test]
    fn floats_strings_and_the_rest_as_c_prints_them() {
        let (text, _) = printf(
            "%f %.2f %e %.3E %g %g %g %#g",
            &[d(1.5), d(-0.125), d(123456.0), d(0.00042), d(100000.0), d(1e6), d(1e-5), d(2.0)],
        );
        assert_eq!(text, "1.500000 -0.12 1.234560e+05 4.200E-04 100000 1e+06 1e-05 2.00000");
        let (text, _) =
            printf("%8.3f|%-9.1e|%+g|%f|%G", &[d(3.25159), d(-2.5e-300), d(0.0), d(f64::INFINITY), d(f64::NAN)]);
        assert_eq!(text, "   3.252|-2.5e-300|+0|inf|NAN");
        let (text, n) = printf("%s|%.3s|%6s|%p|%y", &[(8, 2048), (8, 2048), (8, 2048), (8, 0)]);
        assert_eq!((text.as_str(), n), ("string|str|string|(nil)|%y", 4));
    }
}
