"""The bottom layer's vocabulary, independent of strategies and data: nest, TensorSpec, ReduceOp."""
