//! `cairn board`'s arguments.

use clap::Args;

#[derive(Debug, Args)]
pub struct BoardArgs {
    /// The port to listen on (127.0.0.1 only); 0 picks a free one
    #[arg(long, default_value_t = 0)]
    pub port: u16,

    /// Open the page in the default browser once the server listens
    #[arg(long)]
    pub open: bool,
}
