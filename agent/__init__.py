"""CAKE's self-evolving agent: a search over CAKE IR guided by the compiler and by measurements.

`bazel run //agent:evolve` (agent/evolve.py) runs the default task; docs/agent.md
describes the architecture and the knowledge files under agent/knowledge/.
"""
