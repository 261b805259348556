//! Removing from message text what the user never wrote or read.
//!
//! Claude Code wraps slash commands and injected context in pseudo-XML tags inside user messages. Indexing
//! them as if the user had typed them pollutes search (claude-total-recall's mistake), so they are stripped
//! here, keeping only the command itself (`/compact args`).

/// Tags whose whole element (tags and contents) is removed.
const DROP_ELEMENTS: &[&str] = &[
    "system-reminder",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "command-message",
];

/// What an IDE adds to a request: the file open in the editor, the selection, its diagnostics. The model reads
/// them (they stay in the message), but they are not what the user asked, so a request is titled, indexed and
/// shown in search answers without them (`crate::index::render`).
const IDE_ELEMENTS: &[&str] = &["ide_opened_file", "ide_selection", "ide_diagnostics"];

/// The text without what an IDE added to it (see `IDE_ELEMENTS`), trimmed; empty when nothing else is left. What
/// a request is named by (a session's title, the request behind a change of a file) and what of it is searched.
pub fn without_ide_notes(text: &str) -> String {
    if !text.contains("<ide_") {
        return text.trim().to_string();
    }
    let mut out = text.to_string();
    for tag in IDE_ELEMENTS {
        out = remove_element(&out, tag);
    }
    out.trim().to_string()
}

/// Markers Claude Code writes into the conversation when the user interrupts.
const INTERRUPT_MARKERS: &[&str] = &[
    "[Request interrupted by user for tool use]",
    "[Request interrupted by user]",
];

/// Cleans user-visible text: drops injected elements, rewrites command wrappers to the command itself, and
/// trims. Returns an empty string when nothing the user said is left.
pub fn clean_text(text: &str) -> String {
    if !text.contains('<') && !text.contains("[Request interrupted") {
        return text.trim().to_string();
    }
    let mut out = text.to_string();
    if let Some(command) = command_invocation(&out) {
        out = remove_element(&out, "command-name");
        out = remove_element(&out, "command-args");
        out = format!("{command}\n{out}");
    }
    for tag in DROP_ELEMENTS {
        out = remove_element(&out, tag);
    }
    for marker in INTERRUPT_MARKERS {
        out = out.replace(marker, "");
    }
    out.trim().to_string()
}

/// `/name args` from `<command-name>` and `<command-args>` elements, if the text holds a command.
fn command_invocation(text: &str) -> Option<String> {
    let name = element_body(text, "command-name")?.trim();
    let name = if name.starts_with('/') {
        name.to_string()
    } else {
        format!("/{name}")
    };
    let args = element_body(text, "command-args").unwrap_or("").trim();
    Some(if args.is_empty() {
        name
    } else {
        format!("{name} {args}")
    })
}

fn element_body<'a>(text: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&close)? + start;
    Some(&text[start..end])
}

/// Removes every `<tag>…</tag>` element; an unclosed opening tag removes the rest of the text (it was
/// injected, and what follows it is part of the injection).
fn remove_element(text: &str, tag: &str) -> String {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(&open) {
        out.push_str(&rest[..i]);
        let after = &rest[i + open.len()..];
        match after.find(&close) {
            Some(j) => rest = &after[j + close.len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn what_an_ide_added_is_not_the_request() {
        assert_eq!(
            without_ide_notes(
                "<ide_opened_file>The user opened the file a.rs in the IDE.</ide_opened_file>\nwhy does it fail?"
            ),
            "why does it fail?"
        );
        assert_eq!(without_ide_notes("<ide_selection>x</ide_selection>"), "");
        assert_eq!(without_ide_notes(" plain "), "plain");
    }

    use super::*;

    #[test]
    fn keeps_the_command_itself() {
        let t = "<command-name>/compact</command-name>\n <command-message>compact</command-message>\n <command-args></command-args>";
        assert_eq!(clean_text(t), "/compact");
        let t = "<command-message>init is analyzing…</command-message>\n<command-name>/init</command-name>\n<command-args>fast please</command-args>";
        assert_eq!(clean_text(t), "/init fast please");
    }

    #[test]
    fn drops_injected_blocks() {
        let t = "Fix the bug<system-reminder>\nsecret context\n</system-reminder> now";
        assert_eq!(clean_text(t), "Fix the bug now");
        assert_eq!(
            clean_text("<local-command-stdout>Compacted</local-command-stdout>"),
            ""
        );
        assert_eq!(clean_text("[Request interrupted by user for tool use]"), "");
        assert_eq!(clean_text("  plain  "), "plain");
    }
}
