//! The PostgreSQL project store: the shared contract, on a real server, a fresh database per
//! check.

use std::sync::Arc;

use cairn_domain::ports::Fresh;
use cairn_domain::project::store::ProjectStore;
use cairn_storage_pg::PgProjectStore;
use cairn_storage_pg::testkit::TestDb;

fn fresh() -> Fresh<dyn ProjectStore> {
    let db = TestDb::new();
    let store = PgProjectStore::new(&db.url).expect("a valid test URL");
    Fresh {
        store: Arc::new(store),
        guard: Box::new(db),
    }
}

cairn_domain::project_store_contract!(pg_contract, fresh);
