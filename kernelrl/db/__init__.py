from kernelrl.db.database import Database

__all__ = ["Database"]
