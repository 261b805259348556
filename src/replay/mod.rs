//! Duncan: ask the past sessions themselves. A session window is rebuilt as the API conversation it was
//! ([`conversation`]), the question is appended, and a fresh model call ([`backend`]) must answer
//! `{hasContext, answer}` from that context alone. [`route`] chooses the windows (by default those behind
//! the top search hits), [`run`] asks them with bounded concurrency and re-ranks them by their answers, and
//! [`log`] appends every answer to the query log.

/// The model client, which lives below duncan and notes (`crate::model`), under the names duncan's code uses.
pub use crate::model as backend;
pub use crate::model::conversation;
pub mod log;
pub mod route;
pub mod run;

pub use backend::{Answer, Backend, BackendError, Usage};
pub use conversation::{Conversation, RebuildError, RebuildOptions, Source, rebuild};
pub use route::{Mode, ReplayError, Target, WindowType};
pub use run::{QueryReport, QueryRequest, Summary, WindowResult, query};
