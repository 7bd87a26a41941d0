import sys

from jaxaudit.cli.main import main

sys.exit(main())
