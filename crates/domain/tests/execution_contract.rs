//! The ExecutionSessionStore contract, run against the in-memory adapter: one test per check.

use std::sync::Arc;

use cairn_domain::execution::ExecutionSessionStore;
use cairn_domain::execution::memory::MemoryExecutionSessionStore;
use cairn_domain::ports::Fresh;

fn fresh() -> Fresh<dyn ExecutionSessionStore> {
    Fresh {
        store: Arc::new(MemoryExecutionSessionStore::new()),
        guard: Box::new(()),
    }
}

cairn_domain::execution_session_store_contract!(memory, fresh);
