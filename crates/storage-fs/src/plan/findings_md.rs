//! Findings as `findings.md` lines and `findings/<file>` entries.
//!
//! A finding is one Markdown bullet appended at the end of `findings.md`; one with a details
//! file also goes, as a bullet, into `findings/<file>` (created with a title), and its
//! `findings.md` line names that file so the index the protocol asks for stays complete.

use cairn_domain::plan::Finding;
use cairn_domain::plan::document::FINDINGS_DIR;

/// `findings.md` with `finding` appended.
pub fn append_finding_line(findings_md: &str, finding: &Finding) -> String {
    let mut out = findings_md.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    match finding.file() {
        Some(file) => out.push_str(&format!("- `{FINDINGS_DIR}/{file}`: {}\n", finding.text())),
        None => out.push_str(&format!("- {}\n", finding.text())),
    }
    out
}

/// The details file `findings/<file>` (`None` when it does not exist yet) with `finding`
/// appended.
pub fn append_finding_detail(detail: Option<&str>, file: &str, finding: &Finding) -> String {
    let mut out = detail.map_or_else(|| format!("# {file}\n\n"), str::to_owned);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("- {}\n", finding.text()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_is_a_bullet_and_a_detailed_one_names_its_file() {
        let plain = Finding::new("the parser is lenient", None).unwrap();
        let detailed = Finding::new("tokens expire after D-002", Some("auth.md")).unwrap();
        let text = append_finding_line("# Findings", &plain);
        assert_eq!(text, "# Findings\n- the parser is lenient\n");
        let text = append_finding_line(&text, &detailed);
        assert!(text.ends_with("- `findings/auth.md`: tokens expire after D-002\n"));
        let detail = append_finding_detail(None, "auth.md", &detailed);
        assert_eq!(detail, "# auth.md\n\n- tokens expire after D-002\n");
        assert_eq!(
            append_finding_detail(Some("x"), "auth.md", &plain),
            "x\n- the parser is lenient\n"
        );
    }
}
