# Copyright (c) azure_maintenance.scheduled_events contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulator's impact command in the e2e stage: tell the backend fleet
that an event starts or ends on a VM.

    impact_hook.py ADMIN_URL PHASE VM EVENT_TYPE EVENT_ID
"""

import sys
import urllib.parse
import urllib.request


def main(argv):
    if len(argv) != 6:
        sys.stderr.write('usage: impact_hook.py ADMIN_URL PHASE VM EVENT_TYPE EVENT_ID\n')
        return 2
    admin_url, phase, vm, event_type, event_id = argv[1:]
    query = urllib.parse.urlencode({'phase': phase, 'vm': vm, 'type': event_type, 'event': event_id})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(urllib.request.Request(admin_url + '/impact?' + query, data=b'', method='POST'), timeout=10):
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
