//! The Bus contract suite against the in-process bus (every handle is the same bus: one
//! process).

use std::sync::Arc;

use snodo::bus::{Bus, MemoryBus, contract};

#[tokio::test]
async fn memory_bus_passes_the_contract() {
    let bus: Arc<dyn Bus> = Arc::new(MemoryBus::with_backlog(16));
    let report = contract::run_all(
        || {
            let bus = Arc::clone(&bus);
            async move { bus }
        },
        16,
    )
    .await;
    println!("memory bus: {report:?}");
}
