"""Authors: who writes the next candidate (the tactic search, or an LLM), behind one interface."""
