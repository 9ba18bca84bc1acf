"""Diffs as HTML, for every surface that shows one: the notebook's card (``ui``) and the
sidebar's full-width view (``server``). Knows ``changes`` and ``text``, nothing that shows."""
