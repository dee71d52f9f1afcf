"""Windows on Spark (semantics §6): assignment (:mod:`.assign`), folding in Spark
(:mod:`.fold`), merging on the driver (:mod:`.driver`), and session and sliding windows
computed from their rows (:mod:`.rows`)."""
