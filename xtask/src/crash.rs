//! `cargo xtask crash`.

pub fn run(_args: &[String]) -> Result<(), String> {
    Err("`cargo xtask crash` is not built yet".to_owned())
}
