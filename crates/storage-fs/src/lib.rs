//! cairn's filesystem adapter.
