"""dettui."""
