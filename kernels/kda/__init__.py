"""Kimi Delta Attention forward: recurrent and chunked torch oracles and a CAKE IR chunk schedule."""
