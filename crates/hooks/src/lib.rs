//! cairn-hook: the executable Claude Code runs on hook events, and the settings integration.
