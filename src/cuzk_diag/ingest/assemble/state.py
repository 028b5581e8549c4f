"""What the parts of ``Assembler`` share: its state.

Three files declare it: this one (the class the parts derive from, as Python classes),
``state.pyi`` (the type checker's view: the attributes ``Assembler.__init__`` sets and their
types, and the methods each part calls on the others; each part defines its own) and
``state.pxd`` (the compiled build's: an extension type whose attributes are C struct fields,
which a method that annotates ``self: State`` reads directly).
"""

from __future__ import annotations


class State:
    """The state the parts of ``Assembler`` share (set in ``Assembler.__init__``; the attributes
    and their types are in ``state.pyi``)."""
