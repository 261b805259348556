//! ghola: total recall for Claude Code.
//!
//! The library does the work; `main.rs` only parses arguments and prints. See `ARCHITECTURE.md` for the
//! module map and the invariants.

pub mod atomic_file;
pub mod config;
pub mod hub;
pub mod index;
pub mod mcp;
pub mod model;
pub mod notes;
pub mod private;
pub mod remote;
pub mod replay;
pub mod search;
pub mod secrets;
pub mod service;
pub mod settings;
pub mod transcript;
pub mod ui;
pub mod work;

/// The sentence embedding (all-MiniLM-L6-v2 with candle), its own crate (`crates/embed`) below every module here:
/// the ARM run builds and tests it alone.
pub use ghola_embed as embed;
