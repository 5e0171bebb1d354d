//! The Markdown form of a [`Report`]. Every name and message in it comes from files anyone
//! could have written (trial names, failure messages, device names), so each is escaped to
//! literal text that stays inside its table cell.

use super::{Report, Status};
use std::fmt::Write;

/// `text` as literal Markdown inline text, safe inside a table cell: characters with inline
/// meaning are backslash-escaped, `<` and `&` become entities (no HTML, no entity tricks),
/// and line breaks and other control characters become spaces.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '&' => out.push_str("&amp;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

impl Report {
    /// The Markdown summary.
    pub fn to_markdown(&self) -> String {
        let mut md = String::from("# peerpool run report\n\n## Hardware\n");
        let h = &self.hardware;
        // `write!` into a String cannot fail.
        if let Some(why) = &h.missing {
            let _ = writeln!(md, "No GPUs: {}.", escape(why));
        }
        if !h.driver.is_empty() {
            let _ = writeln!(md, "Driver: {}\n", escape(&h.driver));
        }
        if !h.devices.is_empty() {
            md += "| GPU | name | compute capability | memory (MiB) | pool handle types |\n| --- | --- | --- | --- | --- |\n";
            for d in &h.devices {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} |",
                    d.ordinal,
                    escape(&d.name),
                    escape(&d.compute_capability),
                    d.memory_mib,
                    escape(&d.pool_handle_types)
                );
            }
            md += "\n| from -> to | link | peer access | native atomics | rank |\n| --- | --- | --- | --- | --- |\n";
            for l in &h.links {
                let link = escape(l.link.as_deref().unwrap_or("unknown"));
                let _ = writeln!(
                    md,
                    "| gpu{} -> gpu{} | {link} | {} | {} | {} |",
                    l.from, l.to, l.peer_access, l.native_atomics, l.performance_rank
                );
            }
        }
        let b = &self.build;
        let _ = write!(
            md,
            "\n## Build\npeerpool {}, PTX {} ({}), commit {}\n\n",
            escape(&b.peerpool),
            escape(&b.ptx_origin),
            escape(if b.ptx_rustc.is_empty() { "committed copy" } else { &b.ptx_rustc }),
            escape(b.commit.as_deref().unwrap_or("unknown"))
        );
        let _ = write!(
            md,
            "## Trials\n{} passed, {} failed, {} skipped, {} not run\n\n| status | trial | detail |\n| --- | --- | --- |\n",
            self.count(Status::Passed),
            self.count(Status::Failed),
            self.count(Status::Skipped),
            self.count(Status::NotRun)
        );
        for t in &self.trials {
            let detail = escape(t.detail.as_deref().unwrap_or(""));
            let _ = writeln!(md, "| {:?} | {}: {} | {detail} |", t.status, escape(&t.binary), escape(&t.name));
        }
        md
    }
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escaped_text_has_no_markup_left() {
        let hostile = "a|b`c`*d*_e_[f](g)<img src=x>&amp;~~h~~ #i !j\nk\r\x1b[31m\\";
        let out = escape(hostile);
        assert_eq!(
            out,
            "a\\|b\\`c\\`\\*d\\*\\_e\\_\\[f\\](g)&lt;img src=x>&amp;amp;\\~\\~h\\~\\~ \\#i \\!j k  \\[31m\\\\"
        );
        assert!(!out.contains('\n') && !out.contains('\r'));
        assert_eq!(escape("gpu0->gpu1 no CUDA driver"), "gpu0->gpu1 no CUDA driver");
    }
}
