//! The ExecutionSessionStore contract, run against the in-memory adapter.

use std::sync::Arc;

use cairn_domain::execution::ExecutionSessionStore;
use cairn_domain::execution::contract::run_execution_session_store_contract;
use cairn_domain::execution::memory::MemoryExecutionSessionStore;
use cairn_domain::ports::Fresh;

#[tokio::test]
async fn memory_store_honours_the_contract() {
    run_execution_session_store_contract(&mut || Fresh {
        store: Arc::new(MemoryExecutionSessionStore::new()) as Arc<dyn ExecutionSessionStore>,
        guard: Box::new(()),
    })
    .await;
}
