//! Installing layers: on the whole runtime and on one component.

use super::{Layers, Middleware};
use crate::{Prompt, Resource, RuntimeBuilder, Tool};

impl RuntimeBuilder {
    /// Adds a layer around the dispatch of every request, inside the layers added
    /// before it (the first added is the outermost) and outside every component's own.
    ///
    /// ```
    /// use snodo::middleware::{Middleware, Next, Outcome, Request};
    /// use snodo::Runtime;
    ///
    /// struct Noop;
    /// impl Middleware for Noop {
    ///     async fn call(&self, request: Request<'_>, next: Next<'_>) -> Outcome {
    ///         next.run(request).await
    ///     }
    /// }
    ///
    /// let runtime = Runtime::builder("demo", "1.0.0").layer(Noop).build();
    /// assert!(runtime.is_ok());
    /// ```
    pub fn layer(mut self, layer: impl Middleware) -> Self {
        self.layers.push(layer);
        self
    }
}

/// `layer` and `layers` for a component type.
macro_rules! component_layers {
    ($type:ty, $what:literal) => {
        impl $type {
            #[doc = concat!("Adds a layer around ", $what, ", inside the layers added before it")]
            /// and inside the runtime's.
            #[must_use]
            pub fn layer(mut self, layer: impl Middleware) -> Self {
                self.layers.push(layer);
                self
            }

            #[doc = concat!("Adds every layer of `stack` around ", $what, ", in order")]
            /// (a source installs its stack on each component it contributes).
            #[must_use]
            pub fn layers(mut self, stack: &Layers) -> Self {
                self.layers.extend(stack);
                self
            }
        }
    };
}

component_layers!(Tool, "every call of this tool");
component_layers!(Prompt, "every get of this prompt");
component_layers!(Resource, "every read of this resource");
