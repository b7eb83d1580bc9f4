"""Adapters that put other implementations behind specdec's Protocols (imported only when their package is)."""
