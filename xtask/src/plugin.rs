//! `cargo xtask plugin`.

pub fn run(_args: &[String]) -> Result<(), String> {
    Err("`cargo xtask plugin` is not built yet".to_owned())
}
