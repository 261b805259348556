//! The integration tests but four, in one test binary (`cargo test --release --test suite`; one file's tests:
//! `cargo test --release --test suite ui::`). One binary instead of one per file: each file linked its own copy
//! of the library and compiled `common` again, which was most of the test build's time after the library. The
//! four kept apart are the ones other runs name alone: `index`, `project_paths` and `module_order` under Wine
//! (`.ci/windows/run`), `transcript_rules` in the GitHub workflow.

mod common;

mod archive;
mod corpus;
mod embed_parity;
mod faults;
mod files;
mod first_look;
mod first_run;
mod hub;
mod kernel_code;
mod mcp;
mod mcp_args;
mod notes;
mod plugin;
mod privacy;
mod ranking;
mod recall_mcp;
mod remote;
mod replay;
mod search;
mod search_rules;
mod secrets;
mod service;
mod start;
mod ui;
