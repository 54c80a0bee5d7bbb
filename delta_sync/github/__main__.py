import sys

from delta_sync.github.action import main

sys.exit(main())
