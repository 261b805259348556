//! Time in queries and messages: the time a query names ("on 9 November, 2022", "in January 2024",
//! "2026-03-02", "yesterday"), read as a span of time, so that the ranking can prefer what was said then (see
//! `prior::Rule::OutsideNamedTime`); and whether a query asks when, and a message says when (see
//! `prior::Rule::UntimedForWhen`).
//!
//! A question about the past often says when: "what did we decide about the cache in March", "what did Nate
//! cook on 9 November, 2022". The words of the date match nothing useful (a month's name, a year), while the
//! messages written in that span are where the answer most likely is. A named time is a preference, not a
//! filter (the `after`/`before` arguments are the filter): a date in a query can also be part of what is
//! searched for ("the certificate that expires in March 2027").
//!
//! Four parts: `period` reads the time a query names, `talk` whether a query asks when and whether a
//! message says when, `untimed` the query without the time it names (what its embedding should see), all from
//! the date words of `words`.

mod period;
mod talk;
mod untimed;
mod words;

pub use period::{Period, YEARS_BACK, choose_reading, named_period, readings};
pub use talk::{asks_when, says_when};
pub use untimed::without_named_time;
