"""The pure half of webhooks: retry schedule, address rules, signing, event matching."""
