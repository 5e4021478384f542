"""Tests of the built-in local model backend (``ai_agent.local``)."""
