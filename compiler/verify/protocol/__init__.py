"""The protocol model: role programs executed on small concrete inputs, thread class by thread class.

inputs.py chooses the inputs, program.py compiles role bodies, simulate.py schedules
them with the memory ops of data_ops.py and the barrier ops of sync_ops.py over the
vector clocks of happens_before.py, and findings.py is what the rules read (run once
per verification, gated on a well-formed kernel). docs/verifier_rules.md describes it.
"""
