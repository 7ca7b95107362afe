"""The outer loop: recurring failures and measurements become reviewed knowledge (rules, calibration, tactic weights)."""
