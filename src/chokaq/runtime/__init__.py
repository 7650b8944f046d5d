"""The worker runtime: fetching, executing, retrying and finalizing jobs.

It talks to the database only through ``chokaq.storage.Backend``.
"""
