"""What a batch writes: released events (:mod:`.release`), joins (:mod:`.join`), dead
letters (:mod:`.deadletters`), window records (:mod:`.records`), metrics
(:mod:`.metrics`), through the counted writes of :mod:`.text`."""
