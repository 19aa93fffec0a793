"""What came out: result model, exact aggregation, store, export, import."""
