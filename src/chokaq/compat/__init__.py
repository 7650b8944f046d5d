"""Porting layers: other job libraries' calling conventions over chokaq's own primitives.

Each layer translates to chokaq's API and semantics (``chokaq.App``, ``@app.job``, ``after=``,
periodic schedules) and is no second engine; what cannot mean the same thing is said in the
migration guide, and an option a layer does not support raises, never passes unnoticed.
"""
