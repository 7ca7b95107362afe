"""The CAKE compiler: IR, verification, cost analysis, lowering, build and service."""
