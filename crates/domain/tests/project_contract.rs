//! The project store contract, run against the in-memory adapter.

use std::sync::Arc;

use cairn_domain::ports::Fresh;
use cairn_domain::project::contract::run_project_store_contract;
use cairn_domain::project::memory::MemoryProjectStore;
use cairn_domain::project::store::ProjectStore;

#[tokio::test]
async fn memory_store_honours_the_contract() {
    run_project_store_contract(&mut || Fresh {
        store: Arc::new(MemoryProjectStore::new()) as Arc<dyn ProjectStore>,
        guard: Box::new(()),
    })
    .await;
}
