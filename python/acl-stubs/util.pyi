"""Type stubs of acl.util: bytes <-> C pointers (pyACL's helpers)."""

def bytes_to_ptr(data: bytes, /) -> int:
    """The address of data's own buffer (no copy: keep data alive, never write through it).
    Anything but bytes raises ValueError."""

def ptr_to_bytes(ptr: int, size: int, /) -> bytes:
    """A copy of size bytes at the host address ptr; ptr 0 with size > 0 raises ValueError."""
