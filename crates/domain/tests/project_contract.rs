//! The project store contract, run against the in-memory adapter: one test per check.

use std::sync::Arc;

use cairn_domain::ports::Fresh;
use cairn_domain::project::memory::MemoryProjectStore;
use cairn_domain::project::store::ProjectStore;

fn fresh() -> Fresh<dyn ProjectStore> {
    Fresh {
        store: Arc::new(MemoryProjectStore::new()),
        guard: Box::new(()),
    }
}

cairn_domain::project_store_contract!(memory, fresh);
