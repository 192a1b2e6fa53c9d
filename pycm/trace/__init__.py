"""placeholder until the trace spine lands in this session."""
