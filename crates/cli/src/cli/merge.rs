//! `cairn merge-driver`: the git merge driver of the project store's files.

use std::path::PathBuf;

use clap::Args;

/// git's placeholders, in the order `merge.cairn.driver` passes them.
#[derive(Debug, Args)]
pub struct MergeDriverArgs {
    /// %O: the common ancestor's version (empty when both sides added the file)
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// %A: ours; the merged result is written back here
    #[arg(value_name = "OURS")]
    pub ours: PathBuf,
    /// %B: theirs
    #[arg(value_name = "THEIRS")]
    pub theirs: PathBuf,
    /// %P: the file's path in the repository, which says how to merge it
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
}
