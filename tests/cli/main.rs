//! End-to-end tests: the real `cairn` binary on temporary repositories.

mod concurrency;
mod errors;
mod json_shapes;
mod lifecycle;
mod rules;
mod setup;
mod snapshots;
mod support;
