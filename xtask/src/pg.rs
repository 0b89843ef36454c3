//! One throwaway PostgreSQL cluster for a whole test or bench run: started before the tests,
//! named to them by `CAIRN_TEST_PG`, and stopped when the run ends — passed, failed or panicked —
//! so CI leaves no server behind. (A test run without xtask starts a shared cluster of its own;
//! see `cairn_storage_pg::testkit`.)

use std::path::PathBuf;

use cairn_storage_pg::testkit::{self, TEST_PG_ENV};

pub struct Cluster {
    /// The cluster's directory when this run started it; `None` for a server named by
    /// `CAIRN_TEST_PG`, which is not this run's to stop.
    base: Option<PathBuf>,
    pub url: String,
}

impl Cluster {
    pub fn start() -> Result<Self, String> {
        if let Ok(url) = std::env::var(TEST_PG_ENV)
            && !url.is_empty()
        {
            return Ok(Self { base: None, url });
        }
        let base = std::env::temp_dir().join(format!("cairn-xtask-pg-{}", std::process::id()));
        std::fs::create_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
        let url = testkit::start_cluster(&base)
            .map_err(|e| format!("cannot start the test PostgreSQL: {e}"))?;
        eprintln!("xtask: PostgreSQL for this run at {url}");
        Ok(Self {
            base: Some(base),
            url,
        })
    }

    /// `CAIRN_TEST_PG=<url>`, for the commands of the run.
    pub fn env(&self) -> [(&'static str, &str); 1] {
        [(TEST_PG_ENV, self.url.as_str())]
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let Some(base) = &self.base else { return };
        match testkit::stop_cluster(base) {
            Ok(()) => eprintln!("xtask: stopped the run's PostgreSQL"),
            Err(e) => eprintln!("xtask: could not stop the run's PostgreSQL: {e}"),
        }
        let _ = std::fs::remove_dir_all(base);
    }
}
