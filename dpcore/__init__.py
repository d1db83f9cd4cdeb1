"""dpcore: differentially private synthetic data with a verifiable privacy ledger."""
