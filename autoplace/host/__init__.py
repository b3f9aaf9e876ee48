"""What the autoplace processes of one host share, whichever command they run:

* ``_identity``: who this machine is: its :func:`hardware` and :func:`software` as a
  look-up's key holds them, its :func:`fingerprint` as a study records it;
* ``_machine``: its devices without importing JAX after the first time
  (:func:`machine_devices`), and :func:`machine_key`, what machine-wide figures hold for;
* ``_cache``: the :class:`Cache` of answers, devices and limits, under the user's cache
  directory;
* ``_locks``: the folder of the host's locks (:func:`lock_dir`);
* ``_processes``: whether a process that left something behind still lives.

Imports nothing above the root modules, and no JAX.
"""

from autoplace.host._cache import ENTRY_SCHEMA, Cache, CacheWarning
from autoplace.host._identity import fingerprint, hardware, hardware_key, software
from autoplace.host._locks import LOCK_DIR_ENV, lock_dir
from autoplace.host._machine import machine_devices, machine_key, remember_devices
from autoplace.host._processes import process_alive

__all__ = [
    "ENTRY_SCHEMA",
    "LOCK_DIR_ENV",
    "Cache",
    "CacheWarning",
    "fingerprint",
    "hardware",
    "hardware_key",
    "lock_dir",
    "machine_devices",
    "machine_key",
    "process_alive",
    "remember_devices",
    "software",
]
