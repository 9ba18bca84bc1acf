"""What the toolkit runs on: durable writes, digests, warm threads, GC pauses."""
