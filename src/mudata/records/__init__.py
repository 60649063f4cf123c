"""What a registry entry says, as plain records, and the one rule by which raw
class codes and user ids meet it (below the readers, which name both).
"""

__all__: list[str] = []
