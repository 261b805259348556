//! The shape a rebuilt conversation must have for the Messages API: `check` holds its invariants (alternation
//! from a user message, every tool use answered at the head of the next message, no result without its call),
//! and `fit` trims it to a budget while keeping them (whole turns cut from the head, then the largest tool
//! results shortened, a notice saying what was cut).

use super::{ApiMessage, Block, Speaker, Trim};

/// Cuts whole turns from the head until the messages fit; then, if one turn alone is too big, shortens its
/// largest tool results. A notice at the top says what was cut.
pub(super) fn fit(messages: &mut Vec<ApiMessage>, budget: usize) -> Trim {
    let mut trim = Trim::default();
    let total: usize = messages.iter().map(ApiMessage::estimated_tokens).sum();
    if total <= budget {
        return trim;
    }
    // Candidate cut points: user messages that hold no tool result start a turn, so cutting there never
    // separates a tool_use from its result.
    let mut suffix = total;
    let mut cut_at = None;
    for (i, m) in messages.iter().enumerate() {
        if i > 0 && m.role == Speaker::User && !m.has_tool_result() && suffix <= budget {
            cut_at = Some(i);
            break;
        }
        suffix -= m.estimated_tokens();
    }
    let cut_at = cut_at.unwrap_or_else(|| {
        // No turn boundary fits: keep the last turn and shorten it.
        (1..messages.len())
            .rev()
            .find(|&i| messages[i].role == Speaker::User && !messages[i].has_tool_result())
            .unwrap_or(0)
    });
    if cut_at > 0 {
        trim.messages_cut = cut_at;
        trim.tokens_cut = messages[..cut_at]
            .iter()
            .map(ApiMessage::estimated_tokens)
            .sum();
        messages.drain(..cut_at);
    }
    // Shorten the largest results until it fits.
    loop {
        let total: usize = messages.iter().map(ApiMessage::estimated_tokens).sum();
        if total <= budget {
            break;
        }
        let largest = messages
            .iter_mut()
            .flat_map(|m| m.content.iter_mut())
            .filter_map(|b| match b {
                Block::ToolResult { content, .. } => Some(content),
                Block::Text { text } => Some(text),
                _ => None,
            })
            .max_by_key(|c| c.len());
        let Some(content) = largest else { break };
        let excess_chars = (total - budget) * 7 / 2 + 200;
        if content.len() <= 400 {
            break;
        }
        let keep = content.len().saturating_sub(excess_chars).max(200);
        let keep = content.floor_char_boundary(keep);
        let removed = content.len() - keep;
        content.truncate(keep);
        content.push_str(&format!(
            "\n[… {removed} characters cut from the replay to fit the context budget]"
        ));
        trim.results_shortened += 1;
    }
    if trim.messages_cut > 0 || trim.results_shortened > 0 {
        let notice = format!(
            "[Replay notice: {} earlier message(s) of this window (about {} tokens) were cut to fit the \
             context budget{}.]",
            trim.messages_cut,
            trim.tokens_cut,
            if trim.results_shortened > 0 {
                format!(
                    ", and {} long tool output(s) were shortened",
                    trim.results_shortened
                )
            } else {
                String::new()
            }
        );
        match messages.first_mut() {
            Some(m) if m.role == Speaker::User => {
                // Tool results must lead a user message; the notice goes after them.
                let at = m
                    .content
                    .iter()
                    .take_while(|b| matches!(b, Block::ToolResult { .. }))
                    .count();
                m.content.insert(at, Block::text(notice));
            }
            _ => messages.insert(
                0,
                ApiMessage {
                    role: Speaker::User,
                    content: vec![Block::text(notice)],
                },
            ),
        }
    }
    trim
}

/// A conversation the Messages API would refuse: which message breaks which rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{why}")]
pub struct Malformed {
    /// The index of the first message at fault.
    pub message: usize,
    pub why: String,
}

/// Checks the invariants the Messages API enforces: alternation starting with a user message, every tool
/// use answered at the head of the next message, and no result without its call. Used by tests and by
/// debug assertions.
pub fn check(messages: &[ApiMessage]) -> Result<(), Malformed> {
    let at = |message: usize, why: String| Err(Malformed { message, why });
    if messages.first().map(|m| m.role) != Some(Speaker::User) {
        return at(0, "the first message is not a user message".into());
    }
    for (i, w) in messages.windows(2).enumerate() {
        if w[0].role == w[1].role {
            return at(
                i + 1,
                format!("messages {i} and {} have the same role", i + 1),
            );
        }
    }
    for (i, m) in messages.iter().enumerate() {
        if m.content.is_empty() {
            return at(i, format!("message {i} is empty"));
        }
        let wanted: Vec<&str> = if i > 0 && messages[i - 1].role == Speaker::Assistant {
            messages[i - 1].tool_use_ids().collect()
        } else {
            Vec::new()
        };
        let leading: Vec<&str> = m
            .content
            .iter()
            .map_while(|b| match b {
                Block::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        if leading != wanted {
            return at(
                i,
                format!("message {i} answers tool calls {leading:?}, expected {wanted:?}"),
            );
        }
        let results = m
            .content
            .iter()
            .filter(|b| matches!(b, Block::ToolResult { .. }))
            .count();
        if results != leading.len() {
            return at(
                i,
                format!("message {i} has a tool result after other content"),
            );
        }
        if m.role == Speaker::User && m.tool_use_ids().next().is_some() {
            return at(i, format!("user message {i} holds a tool_use"));
        }
    }
    Ok(())
}
