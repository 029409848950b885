import sys

from .cli import main
from .exiting import exit_now

exit_now(main())
