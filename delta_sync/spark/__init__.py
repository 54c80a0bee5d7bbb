"""Everything that imports pyspark, py4j or delta lives in this package."""

import warnings

# pyspark 4.2 warns on import when pandas 3 is installed; delta-sync never uses pandas, and the warning
# would reach the user's terminal.
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
