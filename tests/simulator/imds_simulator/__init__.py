"""A stdlib-only simulator of the Azure IMDS Scheduled Events endpoint.

Development only: used by the collection's tests and by people rehearsing
maintenance. Start it with the ``imds-simulator`` script next to this
package; drive it through the control API (``control_client``).
"""
