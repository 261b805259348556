//! Duncan: ask the past sessions themselves. A session window is rebuilt as the API conversation it was
//! ([`crate::model::conversation`]), the question is appended, and a fresh model call (a [`crate::model`]
//! backend) must answer
//! `{hasContext, answer}` from that context alone. [`route`] chooses the windows (by default those behind
//! the top search hits), [`run`] asks them with bounded concurrency and re-ranks them by their answers, and
//! [`log`] appends every answer to the query log.

pub mod log;
pub mod route;
pub mod run;

pub use crate::model::conversation::{Conversation, RebuildError, RebuildOptions, Source, rebuild};
pub use crate::model::{Answer, Backend, BackendError, Usage};
pub use route::{Mode, ReplayError, Target, WindowType};
pub use run::{QueryReport, QueryRequest, Summary, WindowResult, query};
