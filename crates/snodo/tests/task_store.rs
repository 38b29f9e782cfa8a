//! The TaskStore contract suite against the in-memory store (every handle is the same
//! store: one process).

use std::sync::Arc;

use snodo::tasks::{MemoryStore, TaskStore, contract};

#[tokio::test]
async fn memory_store_passes_the_contract() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let report = contract::run_all(|| {
        let store = Arc::clone(&store);
        async move { store }
    })
    .await;
    println!(
        "memory store: cancel -> wait_change {:?}, answer -> wait_change {:?}",
        report.cancel_latency, report.answer_latency
    );
}
