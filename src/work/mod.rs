//! The work loop behind `ghola start`: Claude Code run task by task ([`task`]), each task starting with the
//! line of work's notes (and, by mode, the earlier tasks of the sitting) and followed by an extraction of what
//! it taught ([`sitting`]). The prompt itself is the CLI's (`src/cli/start.rs`).

pub mod sitting;
pub mod task;
